"""Example 1: a review judged on two aspects in parallel, then one aggregation call."""
