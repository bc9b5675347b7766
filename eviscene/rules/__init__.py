"""The ground floor: rules more than one layer uses; imports nothing else of EviScene."""
