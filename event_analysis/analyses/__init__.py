"""What the loaded frames say: event lifecycles, notice, fault-domain serialisation, sets, reaction."""
