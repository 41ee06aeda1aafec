"""The lab: a simulated fabric (ibsim + the real OpenSM). :mod:`fabric.lab.driver` is its only door
(a :class:`~fabric.lab.driver.LabDriver`, the labs' lifecycle and :mod:`fabric.lab.check`'s
health check); nothing outside this package imports :mod:`fabric.lab.simulator`."""
