"""two_inputs."""
