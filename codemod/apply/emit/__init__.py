"""Stage 2, emit: the plan -> the change set (kernel strings, stubs, rewrites, layer, CMake), formatted."""
