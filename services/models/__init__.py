"""Models: the in-process cache, backends, speech-translation systems, TTS, the LLM, ZeroGPU, batch use."""
