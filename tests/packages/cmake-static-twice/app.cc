extern "C" int one();
extern "C" int two();
int main() { return one() == two() ? 0 : 1; }
