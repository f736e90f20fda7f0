"""AppWorld's scripted endpoint, on the generic scripted-responder base of ``agentrig.testing``:
``appworld_endpoint`` plays each task's steps as the code agent's model (or a wrong answer, a
memory reply), from the request alone."""
