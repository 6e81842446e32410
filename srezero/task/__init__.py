"""Tasks as data: the TaskSpec models, the loader and validator, and the variant generator."""
