// The runtime calls into the vendored library, so it really needs it at load time.
int vendor_answer();
int presplit_vendor_answer() { return vendor_answer(); }
