"""The JSON API: encode, decode and count with a stored tokenizer, for programs rather than pages."""
