namespace sp {
int answer(int x);
}
extern "C" int ext_answer() { return sp::answer(41); }
