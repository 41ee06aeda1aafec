"""The lab as the operator drives it (``ibfab lab``) and the demo on it."""
