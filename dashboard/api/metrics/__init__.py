"""``/metrics`` (Prometheus): ``collector`` (the families over the database), ``exposition``
and ``tasks`` (the bulk built once per stored figures), ``signals`` (the receiver that
schedules it), ``views`` and ``urls``."""
