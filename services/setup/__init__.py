"""Setting a study up: importing its folder, enrolling participants (the team's and Prolific's),
the demo. Above the protocol packages, whose items each enrolment assigns."""
