"""Port isolation: plan, apply and undo, within the safety limits that hold across time."""
