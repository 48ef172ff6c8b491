"""Conformance of the simulator to Meta's own OpenAPI description of the Cloud API (v23.0).

``spec`` reads Meta's file and builds validators from it, with ``$ref``s
resolved against the whole document; ``defects`` lists, in one place, every
known fault of that file and the correction the tests apply for each;
``traffic`` drives a simulator through every kind of webhook it sends and
every answer its Graph API gives.
"""
