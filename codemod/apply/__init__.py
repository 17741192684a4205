"""`codemod apply`: analysis + rule -> change sets -> one reviewable patch (docs/apply.md)."""
