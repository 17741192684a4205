"""Tests of the build impact model (codemod/impact)."""
