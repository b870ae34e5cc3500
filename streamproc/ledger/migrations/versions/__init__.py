"""One module per schema revision, applied in order; a revision, once released, is never edited."""
