"""connectors/postgres"""
