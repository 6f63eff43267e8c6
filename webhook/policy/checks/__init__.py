"""One module per validation rule, named for its id (dashes as underscores): the rule's spec as its
docstring, its check functions, and its DEFINITION (webhook/policy/contract.py), which says what each
check applies to. webhook/policy/definitions.py collects them."""
