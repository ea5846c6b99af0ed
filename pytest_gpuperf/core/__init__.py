"""The result model and pure maths: a result and its units (`results`, `units`), the one
projection of a result into judged figures and their noise classes (`figures`), sample
statistics (`stats`), measurement settings (`settings`), optional dependencies (`extras`).
Nothing here does I/O, imports torch or imports another subpackage."""
