"""Scripts run by hand to make files the package ships (not shipped themselves)."""
