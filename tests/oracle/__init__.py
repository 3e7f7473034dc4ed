"""Test oracles: the pydantic models the product replaced, kept to check the new parsers against."""
