"""One module per mutation. Each takes (draft, facts, policy) and edits the draft only where a field is
absent, returning (path, what it set) records. Mutations never overwrite a value the user set."""
