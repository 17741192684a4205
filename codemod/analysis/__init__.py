"""Analysis: call graph, launch sites, axis bindings, domains and fan-out."""
