"""Input from outside, read strictly: JSON text, and what a database can store."""
