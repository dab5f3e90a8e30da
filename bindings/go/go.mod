module motionbricks

go 1.19
