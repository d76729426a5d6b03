"""What the GitHub and the Forgejo test servers share: serving HTTP on 127.0.0.1
(serving.py), matching path templates and replying (routing.py), and the state's
bookkeeping of ids, accounts and repositories (state.py, models.py).

Each forge's package (tests/fakes/github, tests/fakes/forgejo) keeps what is its own
forge's behaviour and passes its differences in as parameters; the contracts the two are
checked against share tests/fakes/contract_base.py.
"""
