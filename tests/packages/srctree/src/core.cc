namespace sp {
#ifndef SRCTREE_DROP_ANSWER
int answer(int x) { return x + 1; }
#endif
int version() { return 1; }
}  // namespace sp
