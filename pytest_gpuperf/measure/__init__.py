"""Measuring: the `gpu_benchmark` object (`bench`, `latency`), the engine that times work
(`timing`), clocks (`clock`), telemetry while it runs (`telemetry`), the host's load
(`hostload`), other processes on the GPU (`gpushare`), GPU memory (`memory`) and hidden
dtype conversions (`casts`)."""
