"""The sandbox a kernel runs in: launcher, namespaces, resources, the kernel."""
