int vendor_answer() { return 42; }
