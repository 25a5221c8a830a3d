"""``buildtool ci``: the whole chain as named steps, and its JSON and JUnit reports."""
