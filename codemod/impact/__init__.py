"""Build impact model: parse build logs, price TUs, replay ninja, predict builds after migration."""
