"""The platform's metrics: their definitions (`definitions`), what the control loop
records in them (`recorder`), and the HTTP server that serves them with the /debug
endpoints (`server`), apart as kube-scheduler keeps them."""
