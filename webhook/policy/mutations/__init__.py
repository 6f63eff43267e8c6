"""One module per mutation rule, named for its id (dashes as underscores): the rule's spec as its
docstring, its mutation and its DEFINITION (webhook/policy/contract.py). A mutation takes (draft, facts,
policy, context) and edits the draft only where a field is absent, returning (path, what it set) records:
mutations never overwrite a value the user set. webhook/policy/definitions.py collects them."""
