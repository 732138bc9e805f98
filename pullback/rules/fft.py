"""Rules for fft."""
