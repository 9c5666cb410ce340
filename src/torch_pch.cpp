// Compiles the precompiled header (torch_pch.h) once; the libtorch libraries reuse it.
