"""One module per console view; each renders only what the store holds."""
