"""Getting the bytes: folders, installed packages, wheel archives and their members, and the
pool of worker processes that decodes them."""
