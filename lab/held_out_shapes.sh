# Lab, sourced by lab/held_out_tables.sh: the matmul shapes tuned nowhere that issue 14's
# search was judged on. Set 0 is lab/search_quality.py's six (which it also lists); set 1 six
# more, replayed by lab/replay_held_out.py.
HELD_OUT=("768x768x768,1536x1536x1536,3072x3072x3072,6144x6144x6144,4096x4096x1024,2048x8192x4096"
          "1280x1280x1280,2560x2560x2560,3584x3584x3584,1024x4096x4096,8192x1024x2048,4096x2048x8192")
