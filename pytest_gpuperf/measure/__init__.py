"""Measuring: the `gpu_benchmark` object (`bench`, `latency`), the engine that times work
(`timing`), clocks (`clock`), telemetry while it runs (`telemetry`), the host's load
(`hostload`), GPU memory (`memory`) and hidden dtype conversions (`casts`)."""
