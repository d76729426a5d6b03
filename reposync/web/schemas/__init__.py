"""Marshmallow schemas of the API, one module per resource.

Names follow ``<Noun>Schema`` (what is shown), ``<Noun>CreateSchema`` and
``<Noun>UpdateSchema`` (what a request body takes), ``<Noun>QueryArgsSchema`` (query
strings) and ``<Noun>PageSchema`` (a page of a listing).
"""
