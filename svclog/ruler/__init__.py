"""Ruler: rule groups (YAML, stored per tenant/namespace), periodic evaluation, alerts, compat views.

Plain Python (no Ray): the actor in `svclog/actors/ruler_actor.py` hosts a `Ruler`
and supplies the `InstantQuerier` that runs queries through the querier actors.
"""
