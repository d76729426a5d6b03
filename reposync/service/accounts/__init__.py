"""Who acts: API users, their tokens and grants, what each may do, Connect GitHub, the
secrets sealed at rest, and the write budgets each forge account shares."""
