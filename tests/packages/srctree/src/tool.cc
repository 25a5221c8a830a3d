namespace sp {
int version();
}
int main() { return sp::version() == 1 ? 0 : 1; }
