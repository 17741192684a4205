"""What every stage of apply reads: the change set, tree-sitter recognizers, CMake tokens, markers."""
