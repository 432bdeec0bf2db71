"""Writers other than the topic log (`headwater.destination`): `files` lays Datastream events
out as Datastream writes them to Cloud Storage."""
