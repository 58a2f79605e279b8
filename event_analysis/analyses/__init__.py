"""What the loaded frames say: event lifecycles and endings, notice, fault-domain serialisation, sets, reaction."""
