// What is left of the monolith the split replaced.
int split_legacy_entry() { return 0; }
