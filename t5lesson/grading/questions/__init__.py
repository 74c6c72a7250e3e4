"""Question kinds: what is asked and how an answer is scored."""
