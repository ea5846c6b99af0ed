"""The machine: devices and their capabilities (`device`), NVML (`nvml`), GPU profiles
(`profiles`), memory-cap emulation (`emulation`), and what a test needs of the machine: the
markers parsed and the skip decisions (`marks`)."""
