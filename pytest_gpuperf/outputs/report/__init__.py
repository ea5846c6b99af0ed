"""The HTML report: the page (`html`), the charts' plan (`charts`) and their SVG (`plot`)."""
