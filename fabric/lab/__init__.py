"""The lab: a simulated fabric (ibsim + the real OpenSM). :mod:`fabric.lab.driver` is its only door
(a :class:`~fabric.lab.driver.LabDriver` and the labs' lifecycle); nothing else imports
:mod:`fabric.lab.simulator`."""
