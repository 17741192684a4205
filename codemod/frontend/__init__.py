"""Frontend: the clang toolchain recipe, libclang and tree-sitter parsing, and the parse cache."""
