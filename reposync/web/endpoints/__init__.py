"""The API's endpoints, one module per resource family (a flask-smorest Blueprint each;
their schemas are ``web/schemas/`` by the same names). What every endpoint shares, the
application, authentication, errors, limits, paging and the event streams, stays in
``web/``."""
