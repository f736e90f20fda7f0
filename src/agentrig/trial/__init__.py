"""One trial's frame: the context its participants share, the envelope that turns
infrastructure faults into invalid verdicts, and the silent-truncation watch."""
